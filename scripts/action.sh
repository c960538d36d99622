#!/usr/bin/env bash
# What action.yml runs, in the directory to check: install the linter (unless NAMESPACE_LINT_INSTALL=0,
# for a linter already on PATH), write the SARIF report, then print the findings as GitHub
# annotations; the exit status is the check's (0 clean, 1 findings, 2 usage or configuration error).
#
#   NAMESPACE_LINT_ARGS   arguments for namespace-lint (split on whitespace, as a shell would not glob them)
#   NAMESPACE_LINT_SARIF  the SARIF file to write (default namespace-lint.sarif)
#   NAMESPACE_LINT_FROM   the directory to pip-install the linter from (the action's checkout)
#   GITHUB_OUTPUT         where the step's outputs go (set by the runner; optional here)
set -euo pipefail

sarif="${NAMESPACE_LINT_SARIF:-namespace-lint.sarif}"
read -r -a args <<< "${NAMESPACE_LINT_ARGS:-}"

if [[ "${NAMESPACE_LINT_INSTALL:-1}" != 0 ]]; then
    venv="${RUNNER_TEMP:-${TMPDIR:-/tmp}}/namespace-lint-venv"
    python -m venv "$venv"
    "$venv/bin/python" -m pip install -q "${NAMESPACE_LINT_FROM:?the directory to install the linter from}"
    PATH="$venv/bin:$PATH"
fi

# 1. The SARIF report (for code scanning); its findings do not end the script.
status=0
namespace-lint "${args[@]}" --output-format sarif --output-file "$sarif" --quiet || status=$?
if [[ $status -ge 2 ]]; then
    exit "$status"  # a usage or configuration error: its one line is on stderr already
fi
if [[ -n "${GITHUB_OUTPUT:-}" ]]; then
    echo "sarif-file=$sarif" >> "$GITHUB_OUTPUT"
fi
# 2. The same findings as annotations (warm: the first run filled the cache); its status is the step's.
exec namespace-lint "${args[@]}" --output-format github
