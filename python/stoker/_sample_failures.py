"""A Python dataset's batch that failed (its ``__getitem__``, ``__getitems__`` or collate_fn
raised), carried to the iterating process as the batch itself rather than raised in the worker:
DataLoader's iterator then goes on with the next batch, as DataLoader's own does after it
re-raises a worker's error. The iterating process raises it as an error that is both a
stoker.SampleError and the original exception's type (``except KeyError`` catches it), where
that type can be found, subclassed and made with one message, else its nearest base that can
(``UnicodeDecodeError``'s: ``UnicodeError``, which ``except ValueError`` catches too); else a
SampleError alone."""

import functools
import importlib
import traceback

from stoker._python_steps import SampleError


class Failure:
    """What raised: `text`, one line naming the sample and the error; the original type by its
    module and name and its traceback as text (so it pickles whatever the error holds)."""

    def __init__(self, error: Exception, where: str):
        self.text = " ".join(f"{where} raised {type(error).__name__}: {error}".split())
        self.kind = (type(error).__module__, type(error).__qualname__)
        self.trace = "".join(traceback.format_exception(type(error), error,
                                                        error.__traceback__))

    def error(self, prefix: str) -> SampleError:
        """The exception to raise: the message `prefix` + text, of the original type too where
        it can be; its note (Python 3.11 on) is the original traceback."""
        message = prefix + self.text
        error = _combined(message, _found(*self.kind)) or SampleError(message)
        if hasattr(error, "add_note"):
            error.add_note(f"The original traceback:\n{self.trace.rstrip()}")
        return error


def _found(module: str, qualname: str):
    """The exception class of that module and name (a spawned worker's ``__main__`` is
    ``__mp_main__``), or None where it cannot be found (a class defined in a function)."""
    try:
        found = importlib.import_module("__main__" if module == "__mp_main__" else module)
        for name in qualname.split("."):
            found = getattr(found, name)
    except Exception:  # noqa: BLE001 (importing runs the module's code)
        return None
    return found if isinstance(found, type) and issubclass(found, Exception) else None


def _combined(message: str, original):
    """An error of a class deriving from SampleError and `original` (or the nearest of its
    bases that can be) whose str is `message`; None where there is none."""
    for kind in original.__mro__ if original is not None else ():
        if kind is Exception:
            break
        try:
            error = _both(kind)(message)
        except Exception:  # noqa: BLE001 (a layout conflict, a constructor wanting more)
            continue
        if str(error) == message:
            return error
    return None


@functools.lru_cache(maxsize=None)
def _both(original: type) -> type:
    """The class deriving from SampleError and `original`, named SampleError, its str the
    message itself (not KeyError's repr of it)."""
    return type("SampleError", (SampleError, original),
                {"__str__": Exception.__str__, "__module__": "stoker"})
