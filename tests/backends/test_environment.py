"""What `import cyscatter` leaves in the user's process: the environment as the user had it (the
OpenMP wait policy reaches libgomp, not os.environ or child processes), and threadpoolctl's limits honoured."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

import cyscatter as cs


def _run(code: str, **env) -> subprocess.CompletedProcess:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("OMP_")}
    environ.update(env)
    return subprocess.run([sys.executable, "-c", code], env=environ, capture_output=True, text=True, timeout=60,
                          check=True)


CHILD_SEES = ("import os, subprocess, sys, cyscatter; print(os.environ.get('OMP_WAIT_POLICY')); "
              "print(subprocess.run([sys.executable, '-c', 'import os; print(os.environ.get(\"OMP_WAIT_POLICY\"))'],"
              " capture_output=True, text=True).stdout.strip())")


def test_import_leaves_the_environment_alone():
    assert _run(CHILD_SEES).stdout.split() == ["None", "None"]


def test_a_users_wait_policy_is_kept():
    assert _run(CHILD_SEES, OMP_WAIT_POLICY="ACTIVE").stdout.split() == ["ACTIVE", "ACTIVE"]


@pytest.mark.parametrize("user, libgomp", [(None, "PASSIVE"), ("ACTIVE", "ACTIVE")])
def test_libgomp_gets_passive_waiting_unless_the_user_chose(user, libgomp):
    env = {"OMP_DISPLAY_ENV": "TRUE"} | ({"OMP_WAIT_POLICY": user} if user else {})
    shown = _run("import cyscatter", **env).stderr
    if "OPENMP DISPLAY ENVIRONMENT" not in shown:
        pytest.skip("the OpenMP runtime does not display its environment (not libgomp)")
    assert f"OMP_WAIT_POLICY = '{libgomp}'" in shown


threadpoolctl = pytest.importorskip("threadpoolctl")


def test_threadpoolctl_limits_are_honoured_by_default():
    code = ("import numpy as np, threadpoolctl, cyscatter as cs\n"
            "src = np.random.default_rng(0).random((200_000, 8)); idx = np.arange(200_000) % 1000\n"
            "with threadpoolctl.threadpool_limits(1):\n"
            "    inside = cs.get_num_threads(); cs.scatter(src, idx, 'add')\n"
            "print(inside, cs.kernels._teams_have_started(), cs.get_num_threads())")
    inside, teams, after = _run(code).stdout.split()
    assert inside == "1" and teams == "False"   # the large call ran on one thread
    assert after == _run("import cyscatter as cs; print(cs.get_num_threads())").stdout.strip()   # restored


def test_set_num_threads_overrides_threadpoolctl_until_reset():
    with threadpoolctl.threadpool_limits(1):
        try:
            cs.set_num_threads(2)
            assert cs.get_num_threads() == 2
            cs.set_num_threads(None)
            assert cs.get_num_threads() == 1
        finally:
            cs.set_num_threads(None)


def test_a_value_set_with_putenv_is_kept():
    """os.putenv writes the C environment only (os.environ does not see it): it must survive the import."""
    code = ("import os; os.putenv('OMP_WAIT_POLICY', 'ACTIVE'); import cyscatter, subprocess; "
            "print(subprocess.run(['sh', '-c', 'echo ${OMP_WAIT_POLICY-unset}'], capture_output=True, "
            "text=True).stdout.strip())")
    assert _run(code).stdout.strip() == "ACTIVE"
