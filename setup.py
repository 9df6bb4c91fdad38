"""Builds the Python package `stoker` (python/stoker) and its extension stoker._stoker.

The extension is built by the project's CMake (STOKER_BUILD_PYTHON=ON, without LibTorch) in
build-python/ beside this file, or in $STOKER_PYTHON_BUILD_DIR, so rebuilds are incremental
(and use ccache when installed); $STOKER_CMAKE_ARGS adds arguments to its configure (e.g.
-DCMAKE_PREFIX_PATH=..., as scripts/gpu/build.sh gives). It links no LibTorch, so one wheel
serves every torch version. As users install it (build requirements from PyPI: setuptools,
pybind11, pyarrow (its Arrow C++ libraries read Parquet; the package then needs the same
pyarrow); a C++ compiler, CMake and the libraries of scripts/setup.sh from the system):

    pip install .

scripts/build_wheel.sh builds the wheel that carries its libraries, Arrow's included
($STOKER_WHEEL_CARRIES_ARROW: it then requires no pyarrow).
"""

import importlib.util
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


def stable_packages(build_dir):
    """build_dir/packages: links to this build's pybind11 and pyarrow, for CMake to find them
    there (its Python, on PYTHONPATH). pip's build isolation installs them in a new folder per
    build; include paths that change would recompile what includes them every build (ninja's
    commands and ccache's hashes name the paths)."""
    folder = build_dir / "packages"
    folder.mkdir(parents=True, exist_ok=True)
    for name in ("pybind11", "pyarrow"):
        spec = importlib.util.find_spec(name)
        link = folder / name
        if link.is_symlink():
            link.unlink()
        if spec is not None and spec.origin:
            link.symlink_to(Path(spec.origin).parent, target_is_directory=True)
    return folder


def pybind11_dir(packages):
    """-Dpybind11_DIR of the pybind11 package of this build (PyPI's, with build isolation), or
    nothing: CMake then finds a system one (Debian's pybind11-dev)."""
    if not (packages / "pybind11").exists():
        return []
    return [f"-Dpybind11_DIR={packages / 'pybind11/share/cmake/pybind11'}"]


class CMakeBuild(build_ext):
    """Builds the extension target with CMake and copies the module where setuptools wants it."""

    def build_extension(self, ext):
        build_dir = Path(os.environ.get("STOKER_PYTHON_BUILD_DIR", ROOT / "build-python"))
        env = dict(os.environ)
        env.setdefault("CCACHE_BASEDIR", str(ROOT))
        env.setdefault("CCACHE_NOHASHDIR", "1")
        packages = stable_packages(build_dir)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(packages),
                                                          env.get("PYTHONPATH")]))
        if shutil.which("cmake") is None:
            sys.exit("stoker: building the extension needs CMake >= 3.22 on PATH "
                     "(Debian: apt-get install cmake; or scripts/setup.sh)")
        # Configured every time: with build isolation pybind11 lives in a new directory per build.
        generator = []
        if not (build_dir / "CMakeCache.txt").exists() and shutil.which("ninja"):
            generator = ["-G", "Ninja"]
        subprocess.run(
            ["cmake", "-S", str(ROOT), "-B", str(build_dir), *generator,
             # The build of build/ and of every benchmark: the same objects, from ccache where
             # build/ compiled them, and the code that was measured; the module without its
             # debug lines.
             "-DCMAKE_BUILD_TYPE=RelWithDebInfo", "-DCMAKE_MODULE_LINKER_FLAGS=-Wl,--strip-debug",
             "-DSTOKER_WITH_TORCH=OFF",
             "-DSTOKER_BUILD_TESTS=OFF", "-DSTOKER_BUILD_BENCH=OFF",
             "-DSTOKER_BUILD_PYTHON=ON", f"-DPython_EXECUTABLE={sys.executable}",
             *pybind11_dir(packages),
             *shlex.split(os.environ.get("STOKER_CMAKE_ARGS", ""))],
            check=True, env=env, stdout=subprocess.DEVNULL)
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
    install_requires=["numpy"] + ([] if os.environ.get("STOKER_WHEEL_CARRIES_ARROW")
                                  else ["pyarrow==26.0.1"]),
    zip_safe=False,
)
