"""Builds the Python package `stoker` (python/stoker) and its extension stoker._stoker.

The extension is built by the project's CMake (STOKER_BUILD_PYTHON=ON, without LibTorch) in
build-python/ beside this file, or in $STOKER_PYTHON_BUILD_DIR, so rebuilds are incremental
(and use ccache when installed); $STOKER_CMAKE_ARGS adds arguments to its first configure
(e.g. -DCMAKE_PREFIX_PATH=..., as scripts/gpu/build.sh gives). Offline, with Debian's
setuptools and pybind11:

    /usr/bin/python3 -m venv --system-site-packages .venv
    .venv/bin/pip install --no-build-isolation .
"""

import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = Path(__file__).resolve().parent


def project_version():
    for line in (ROOT / "CMakeLists.txt").read_text().splitlines():
        if line.startswith("project(stoker VERSION "):
            return line.split()[2]
    raise RuntimeError("CMakeLists.txt names no project version")


class CMakeBuild(build_ext):
    """Builds the extension target with CMake and copies the module where setuptools wants it."""

    def build_extension(self, ext):
        build_dir = Path(os.environ.get("STOKER_PYTHON_BUILD_DIR", ROOT / "build-python"))
        env = dict(os.environ)
        env.setdefault("CCACHE_BASEDIR", str(ROOT))
        env.setdefault("CCACHE_NOHASHDIR", "1")
        if not (build_dir / "CMakeCache.txt").exists():
            generator = ["-G", "Ninja"] if shutil.which("ninja") else []
            subprocess.run(
                ["cmake", "-S", str(ROOT), "-B", str(build_dir), *generator,
                 "-DCMAKE_BUILD_TYPE=Release", "-DSTOKER_WITH_TORCH=OFF",
                 "-DSTOKER_BUILD_TESTS=OFF", "-DSTOKER_BUILD_BENCH=OFF",
                 "-DSTOKER_BUILD_PYTHON=ON", f"-DPython_EXECUTABLE={sys.executable}",
                 *shlex.split(os.environ.get("STOKER_CMAKE_ARGS", ""))],
                check=True, env=env)
        jobs = ["-j", str(self.parallel)] if self.parallel else []
        subprocess.run(["cmake", "--build", str(build_dir), "--target", "stoker_python", *jobs],
                       check=True, env=env)
        built = next((build_dir / "src/stoker/python").glob("_stoker*.so"))
        target = Path(self.get_ext_fullpath(ext.name))
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(built, target)


setup(
    name="stoker",
    version=project_version(),
    description="Keeps accelerators fed: sharded datasets and a fast loader for PyTorch",
    package_dir={"": "python"},
    packages=["stoker"],
    ext_modules=[Extension("stoker._stoker", sources=[])],
    cmdclass={"build_ext": CMakeBuild},
    # setuptools' own scratch space beside the CMake build, not in the C++ build's build/.
    options={"build": {"build_base": "build-python/setuptools"}},
    python_requires=">=3.9",
    install_requires=["numpy"],
    zip_safe=False,
)
