"""Builds the extension with the project's CMake (python/CMakeLists.txt), then packages it.

The CMake build directory is $SEQLAB_BUILD_DIR, default build/ (what scripts/build.sh uses), so a
tree that is already built only relinks what changed. See pyproject.toml and docs/python.md.
"""
import os
import shutil
import subprocess
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = Path(__file__).resolve().parent


class CMakeBuild(build_ext):
    def build_extension(self, ext):
        build = Path(os.environ.get("SEQLAB_BUILD_DIR", ROOT / "build"))
        subprocess.run(["cmake", "-S", str(ROOT), "-B", str(build), "-G", "Ninja",
                        "-DCMAKE_BUILD_TYPE=Release", "-DSEQLAB_PYTHON=ON"], check=True)
        subprocess.run(["cmake", "--build", str(build), "--target", "seqlab_python",
                        "seqlab_cli"], check=True)
        built = next((build / "python" / "seqlab").glob("_seqlab*.so"))
        target = Path(self.get_ext_fullpath(ext.name))
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(built, target)


# setuptools' own scratch (build/pip, seqlab.egg-info) stays under build/, out of the source tree.
PIP_BUILD = "build/pip"
os.makedirs(ROOT / PIP_BUILD, exist_ok=True)
setup(ext_modules=[Extension("seqlab._seqlab", sources=[])], cmdclass={"build_ext": CMakeBuild},
      options={"build": {"build_base": PIP_BUILD}, "egg_info": {"egg_base": PIP_BUILD}})
