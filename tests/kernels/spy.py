"""A stand-in for a `@triton.jit` kernel that records each launch and runs the real kernel.

Tests use it to prove which path ran: the Triton kernel (a launch recorded, with its grid) or the
torch path (none).
"""


class LaunchSpy:
    def __init__(self, kernel):
        self.kernel = kernel
        self.grids = []

    @property
    def launches(self) -> int:
        return len(self.grids)

    def __getitem__(self, grid):
        self.grids.append(grid)
        return self.kernel[grid]


def spy_launches(monkeypatch, module, kernel_name: str) -> list:
    """Replace `module.<kernel_name>` by a LaunchSpy; return the list its launch grids go to."""
    spy = LaunchSpy(getattr(module, kernel_name))
    monkeypatch.setattr(module, kernel_name, spy)
    return spy.grids
