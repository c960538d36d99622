"""Every registered operator's module launches through a `torch.library` custom op.

Generic over the registry: for each op's module, the `@torch.library.custom_op("sglang::...")`
definitions (read with `ast`) must exist, each with `mutates_args` given and a `register_fake`,
and each must be loaded under `torch.ops.sglang` once the module is imported. (Each operator's own
test file runs `torch.compile(fullgraph=True)` over it; this test says none was left out.)
"""

import ast
import importlib
from pathlib import Path

import pytest
import torch

from sglang.kernels import registry

REPO_ROOT = Path(__file__).resolve().parents[2]


def _custom_ops(source: str) -> dict[str, tuple[str, bool]]:
    """function name -> (op name, has mutates_args) for each `@torch.library.custom_op(...)`."""
    found = {}
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.FunctionDef):
            continue
        for dec in node.decorator_list:
            if (isinstance(dec, ast.Call) and ast.unparse(dec.func) == "torch.library.custom_op"
                    and dec.args and isinstance(dec.args[0], ast.Constant)):
                found[node.name] = (dec.args[0].value,
                                    any(k.arg == "mutates_args" for k in dec.keywords))
    return found


def _fakes(source: str) -> set[str]:
    return {ast.unparse(dec.value) for node in ast.walk(ast.parse(source))
            if isinstance(node, ast.FunctionDef) for dec in node.decorator_list
            if isinstance(dec, ast.Attribute) and dec.attr == "register_fake"}


MODULES = sorted({registry.get(op).targets["triton"].split(":")[0] for op in registry.op_ids()})


@pytest.mark.parametrize("module", MODULES)
def test_module_registers_custom_ops_with_fakes(module):
    source = (REPO_ROOT / (module.replace(".", "/") + ".py")).read_text(encoding="utf-8")
    ops = _custom_ops(source)
    assert ops, f"{module}: no @torch.library.custom_op(\"sglang::...\") launches its kernels"
    fakes = _fakes(source)
    importlib.import_module(module)
    for fn, (name, has_mutates) in ops.items():
        namespace, _, op_name = name.partition("::")
        assert namespace == "sglang", f"{module}.{fn}: op {name!r} is not in the sglang namespace"
        assert has_mutates, f"{module}.{fn}: custom_op({name!r}) must say mutates_args"
        assert fn in fakes, f"{module}.{fn}: custom_op({name!r}) has no register_fake"
        assert hasattr(torch.ops.sglang, op_name), f"{name} is not registered with torch"


def test_the_reader_finds_a_decorated_op():
    src = ('@torch.library.custom_op("sglang::x", mutates_args=())\ndef _x(a): pass\n'
           '@_x.register_fake\ndef _(a): pass\n')
    assert _custom_ops(src) == {"_x": ("sglang::x", True)} and _fakes(src) == {"_x"}
