# aah's nni: NNI's trial API for images and machines without NNI
# (docs/nni.md). Pure Python 3, the standard library only.
#
# A user's own NNI wins: when another package named nni is found on
# sys.path (besides the directory holding this one), this module loads that
# one in its place, so `import nni` and `import nni.trial` give the real
# NNI. aah puts this directory first on PYTHONPATH (the local backend) or in
# the distribution's dist-packages (the trial images), and either way the
# user's installation is the one imported.

import importlib.machinery
import importlib.util
import os
import sys


def _other_nni():
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    others = [p for p in sys.path if os.path.abspath(p or os.curdir) != here]
    return importlib.machinery.PathFinder.find_spec(__name__, others)


_spec = _other_nni()
if _spec is not None and _spec.loader is not None:
    _real = importlib.util.module_from_spec(_spec)
    sys.modules[__name__] = _real   # the import statement returns what is here
    _spec.loader.exec_module(_real)
else:
    from .trial import *  # noqa: F401,F403 (NNI's nni exports the trial API)
    from .trial import __all__  # noqa: F401

    __version__ = '0+aah'
