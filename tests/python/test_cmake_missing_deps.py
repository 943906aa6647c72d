"""CMake names every missing Debian package at once, with the command that
installs them (cmake/dependencies.cmake), instead of a bare CMake error such as
"Could not find DLPACK_INCLUDE_DIR". Each case configures only as far as the
check (a few seconds), with libraries hidden from CMake's find_package."""
import os
import shutil
import subprocess
import sys

import pytest

from conftest import REPO

pytestmark = pytest.mark.skipif(shutil.which("cmake") is None, reason="needs cmake")


def configure(tmp_path, *args, env=None):
    # pybind11 from the venv, as pip builds get it (setup.sh installs no pybind11-dev).
    pybind11 = pytest.importorskip("pybind11")
    proc = subprocess.run(
        ["cmake", "-S", str(REPO), "-B", str(tmp_path / "build"),
         "-DTOKPACK_BUILD_TESTS=OFF", "-DTOKPACK_BUILD_BENCH=OFF",
         "-DTOKPACK_BUILD_PYTHON=ON", f"-DPython_EXECUTABLE={sys.executable}",
         f"-Dpybind11_DIR={pybind11.get_cmake_dir()}", *args],
        capture_output=True, text=True, timeout=300, env=env)
    return proc.returncode, proc.stdout + proc.stderr


def test_missing_libraries_are_named_once_with_the_apt_command(tmp_path):
    rc, out = configure(tmp_path, "-DCMAKE_DISABLE_FIND_PACKAGE_simdjson=ON",
                        "-DCMAKE_DISABLE_FIND_PACKAGE_CLI11=ON")
    assert rc != 0
    assert out.count("CMake Error") == 1, out
    assert "tokpack needs these Debian packages to build" in out
    # Exactly the hidden two: the line ends after them.
    assert "sudo apt-get update && sudo apt-get install -y libsimdjson-dev libcli11-dev\n" in out


def test_no_compiler_names_build_essential_or_cxx(tmp_path):
    env = dict(os.environ, CXX=str(tmp_path / "no-such-c++"))
    rc, out = configure(tmp_path, env=env)
    assert rc != 0
    assert out.count("CMake Error") == 1, out
    assert "CMAKE_CXX_COMPILER not set" not in out
    # On a machine scripts/setup.sh prepared, every package is there: the fault is
    # CXX, and nothing else may be named (pybind11 comes from the venv, not dpkg).
    if dpkg_installed("build-essential"):
        assert "no-such-c++" in out, out
        assert "tokpack needs these Debian packages" not in out, out
    else:
        assert "install -y build-essential" in out, out


def dpkg_installed(package):
    if shutil.which("dpkg-query") is None:
        return False
    proc = subprocess.run(["dpkg-query", "-W", "-f=${Status}", package],
                          capture_output=True, text=True)
    return "install ok installed" in proc.stdout
