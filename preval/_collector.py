"""The ``preval`` command's garbage collection: none while its modules load, and none of what
they made afterwards.

Loading Polars and preval makes about 40,000 objects that live as long as the process (modules,
classes, functions), and Python's cycle collector runs every 700 allocations: about 90 passes
while they load, each walking the youngest objects and every tenth the older ones too, and
finding nothing to free. At the exit, the interpreter collects once more over all of them,
which costs more than anything the command does on a small file. So the command (as
`is_the_command` decides, as for the allocator's settings) holds collection from its first
import to its parser (`hold`, run by `preval._quiet_start` before Polars loads), then moves
what exists into the collector's permanent generation and collects again as usual (`loaded`):
objects made by the evaluation are collected as before, the modules' are no longer walked.
`ending` does the same with what is left once the command has written its outputs, so that
the interpreter's last collection walks nothing. A program that imports the library keeps
Python's collection as it was: only the command's own process is changed.

Nothing is freed later than it would be: no collection frees a module's objects, and the exit
handlers (``atexit``, ``weakref.finalize``, which remove spill directories) run as before.
"""

import gc

_COMMAND = False  # whether this process is the command (`hold` has run)
_HELD = False  # whether `hold` has disabled collection


def hold() -> None:
    """This process is the command: no collection from now until `loaded` (its imports)."""
    global _COMMAND, _HELD
    _COMMAND = True
    if gc.isenabled():
        gc.disable()
        _HELD = True


def loaded() -> None:
    """The imports are done: what they made is kept out of every later collection, and
    collection resumes (if `hold` stopped it)."""
    global _HELD
    if _HELD:
        gc.freeze()
        gc.enable()
        _HELD = False


def ending() -> None:
    """The command has written its outputs: the interpreter's collection at exit need not walk
    what is still alive (it frees none of it; the exit handlers run all the same). In the
    command only: a program that calls `preval.cli.main` goes on collecting as before."""
    if _COMMAND:
        gc.freeze()
