"""Errors: every CLI error code becomes its exception class (from a real
failure where a test can cause one), options sbx does not have raise
InvalidArgumentError naming them, and the workspace_token rules."""

from __future__ import annotations

import builtins
import subprocess

import pytest

import sbx
from sbx import Sandbox
from sbx.errors import error_for

from conftest import sbx_cli

CODES = {
    "INVALID_ARGUMENT": sbx.InvalidArgumentError,
    "NOT_FOUND": sbx.NotFoundError,
    "SANDBOX_NOT_RUNNING": sbx.SandboxNotRunningError,
    "PATH_INVALID": sbx.SandboxPathInvalidError,
    "RUNTIME_UNAVAILABLE": sbx.RuntimeUnavailableError,
    "NETWORK_BLOCK_UNAVAILABLE": sbx.NetworkBlockUnavailableError,
    "SECRETS_NOT_ALLOWED": sbx.SecretsNotAllowedError,
    "POLICY_REFUSED": sbx.PolicyRefusedError,
    "BUSY": sbx.BusyError,
    "TIMEOUT": sbx.TimeoutError,
}


def cli_codes():
    """The codes the CLI can report: sbx(1)'s list."""
    out = sbx_cli("help").stdout.decode() + open(
        __import__("os").path.join(__import__("conftest").SRCDIR, "man", "sbx.1.md")).read()
    return [c for c in CODES if c in out]


@pytest.mark.parametrize("code", list(CODES))
def test_each_code_has_its_class(code):
    e = error_for(code, "m")
    assert type(e) is CODES[code] and e.code == code and isinstance(e, sbx.SbxError)
    assert e.message == "m"


def test_every_documented_code_is_mapped():
    assert set(cli_codes()) == set(CODES)


def test_timeout_is_also_the_builtin():
    assert issubclass(sbx.TimeoutError, builtins.TimeoutError)
    assert issubclass(sbx.SandboxFailedError, sbx.SandboxNotRunningError)
    assert issubclass(sbx.SandboxTerminatedError, sbx.SandboxNotRunningError)


# Options of hosted SDKs that sbx now has: passed to sbx create as its own.
PASSED = {"gpu": ("all", ["--gpu", "all"]), "docker_enabled": (True, ["--docker"]),
          "namespace": ("ns", ["--namespace", "ns"]), "priority": (1, ["--priority", "1"])}


@pytest.mark.parametrize("name", sorted(PASSED))
def test_options_sbx_has_are_passed_to_create(name):
    value, want = PASSED[name]
    assert want[0] in sbx_cli("create", "--help").stdout.decode()
    args = Sandbox(image="busybox", **{name: value})._create_args()
    i = args.index(want[0])
    assert args[i:i + len(want)] == want


def test_unknown_option_is_refused_by_name():
    with pytest.raises(sbx.InvalidArgumentError) as e:
        Sandbox(image="busybox", no_such_option=1)
    assert "no_such_option" in str(e.value)


def test_workspace_token_rules():
    Sandbox(image="busybox", workspace_token=False)
    with pytest.raises(sbx.InvalidArgumentError) as e:
        Sandbox(image="busybox", workspace_token=True)
    assert "secrets" in str(e.value) and "workspace_token" in str(e.value)


@pytest.mark.parametrize("bad", [{"cpu": "lots"}, {"memory": "1Qb"}, {"memory": -1}, {"cpu": True},
                                 {"sync_local_dir": 3}, {"sync_local_dir": [""]}])
def test_bad_values(bad):
    with pytest.raises(sbx.InvalidArgumentError):
        Sandbox(image="busybox", **bad)


@pytest.fixture(scope="module")
def ended(runtime):
    b = Sandbox.create("busybox", runtime=runtime)
    b.terminate()
    return b


def test_real_errors(sb, ended, runtime):
    with pytest.raises(sbx.NotFoundError):
        Sandbox.connect("sb-000000000000")
    with pytest.raises(sbx.NotFoundError):
        Sandbox.create("no-such-image", runtime=runtime, pull="never")
    with pytest.raises(sbx.InvalidArgumentError):
        sb.update_network_permissions(allow_list=["not-a-cidr"])
    with pytest.raises(sbx.SandboxPathInvalidError):
        sb.read_file("relative")
    with pytest.raises(sbx.TimeoutError) as e:
        sb.wait(timeout=1)
    assert isinstance(e.value, builtins.TimeoutError) and e.value.code == "TIMEOUT"
    with pytest.raises(sbx.SandboxNotRunningError):
        ended.exec("true").wait()
    with pytest.raises(sbx.SandboxNotRunningError):
        ended.tunnel(8080)
    with pytest.raises(sbx.SandboxNotRunningError):
        ended.close_tunnel(8080)
    with pytest.raises(sbx.SandboxTerminatedError):
        ended.wait_for_running(timeout=10)
    if runtime == "runc":
        with pytest.raises(sbx.RuntimeUnavailableError):
            sb.snapshot_memory()


def test_runtime_unavailable(sbx_root):
    with pytest.raises(sbx.InvalidArgumentError):
        Sandbox.create("busybox", runtime="no-such-runtime")
