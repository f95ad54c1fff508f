"""Exceptions and warnings raised by tensordict.

One class per recurring condition, the same in every class and function. Each
subclasses the builtin that the well-known TensorDict API raises for the same
case, so that code catching the builtin keeps working.
"""

from __future__ import annotations

import os
import sys
import warnings

__all__ = [
    "AbstractClassError",
    "AcceleratorUnavailableError",
    "AppendError",
    "ArchiveFormatError",
    "ArchiveNotWritableError",
    "ArchiveTargetError",
    "AxisRangeError",
    "BatchSizeArgumentError",
    "BatchSizeError",
    "ClassFlagError",
    "ConflictingArgumentsError",
    "ConsolidateArgumentError",
    "ConsolidateEntryError",
    "ConsolidatedFormatError",
    "ConsolidatedNotFoundError",
    "ConversionInputError",
    "CopyAtError",
    "DensifyError",
    "DeviceUnavailableError",
    "DimNameConflictError",
    "DimTypeError",
    "DimensionError",
    "EntryDtypeError",
    "EntryExistsError",
    "EntryShapeError",
    "EntryTypeError",
    "ExistingFileError",
    "MappedElsewhereError",
    "ForeignWriterError",
    "FieldCastError",
    "FirstClassDimError",
    "IndexShapeError",
    "IndexTypeError",
    "InvalidArgumentError",
    "InvalidSourceError",
    "KeyFileNameError",
    "KeyMismatchError",
    "KeyTypeError",
    "LazyViewCastError",
    "LazyViewError",
    "LockedError",
    "MappingLimitError",
    "MaskError",
    "MemberBatchSizeError",
    "MemmapFormatError",
    "MemmapNotFoundError",
    "MissingFieldError",
    "MissingKeyError",
    "NotAFolderError",
    "NotDifferentiableError",
    "NotMemmapError",
    "NotTensorCollectionError",
    "PaddingError",
    "PathThroughLeafError",
    "PeerFailedError",
    "PermutationError",
    "PickleRefusedError",
    "ProcessGroupNotInitializedError",
    "ReadOnlyMemmapError",
    "RenameDestinationError",
    "ReplaceArgumentError",
    "ReservedFieldError",
    "ShapeArgumentError",
    "ShapeMismatchError",
    "SharedValueError",
    "SplitSizeError",
    "StructureMismatchError",
    "SymlinkError",
    "TensorDictError",
    "TooFewInputsError",
    "TransferTimeoutError",
    "UnbatchedMemmapError",
    "UnexpectedStateKeyError",
    "UnknownFieldError",
    "ValueAtIndexError",
    "UnknownStorageError",
    "UnsetFieldError",
    "UnsupportedConversionError",
    "WorkerDiedError",
    "warn",
]


class TensorDictError(Exception):
    """Base class of every exception defined by tensordict."""


class _Sentence:
    """``KeyError`` quotes its message; ours is a sentence, shown as it is."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class LockedError(TensorDictError, RuntimeError):
    """A locked tensordict was asked to add, remove or rebind an entry."""


class BatchSizeError(TensorDictError, RuntimeError):
    """A value's leading dimensions do not match the batch size."""


class BatchSizeArgumentError(TensorDictError, TypeError):
    """``batch_size=`` was passed to a method of a class that cannot take it there (``to()`` of a lazy stack)."""


class EntryShapeError(BatchSizeError, ValueError):
    """A value written in place (``set_``, ``update_``) does not fit the shape of its entry.

    A ``ValueError`` as in the well-known API's ``set_``, and a ``RuntimeError`` as in its
    ``update_``.
    """


class MemberBatchSizeError(BatchSizeError, ValueError):
    """A new member of a lazy stack does not have the members' batch size (``append``, ``insert``, ``extend``)."""


class KeyFileNameError(TensorDictError, ValueError, RuntimeError):
    """A key that cannot be a file name with ``robust_key=False`` (``"a/b"``, ``".."``): the
    well-known API fails writing it (a ``RuntimeError``)."""


class KeyMismatchError(_Sentence, TensorDictError, KeyError, RuntimeError):
    """Two tensordicts that must have the same keys do not (stacking, concatenating, arithmetic)."""


class KeyTypeError(_Sentence, TensorDictError, KeyError, TypeError, RuntimeError):
    """A key is not a string or a tuple of strings.

    The reference raises ``KeyError`` when reading such a key and ``RuntimeError``
    elsewhere; this error is both, and a ``TypeError``.
    """


class MissingKeyError(_Sentence, TensorDictError, KeyError):
    """A key is not in the tensordict."""


class DimensionError(TensorDictError, IndexError, RuntimeError):
    """A batch dimension (or an index) is out of range for the batch size.

    An ``IndexError``, and a ``RuntimeError`` as the well-known API raises for a dim
    out of range in ``unsqueeze`` and the like.
    """


class InvalidSourceError(TensorDictError, TypeError, ValueError):
    """A tensordict was built from something that is not a mapping."""


class PathThroughLeafError(_Sentence, TensorDictError, KeyError, ValueError):
    """A nested key goes through an entry that is not a tensordict."""


class ProcessGroupNotInitializedError(TensorDictError, RuntimeError, ValueError):
    """A distributed method was called before ``torch.distributed.init_process_group``.

    A ``ValueError`` too, as torch raises for a default process group that does not exist.
    """


class ForeignWriterError(TensorDictError, RuntimeError):
    """A memory-mapped folder claimed by one writer (``claim_writer``) was changed by another."""


class StructureMismatchError(TensorDictError, RuntimeError):
    """A tensordict received over ``torch.distributed`` does not have the sender's keys, shapes and dtypes."""


class PeerFailedError(TensorDictError, RuntimeError):
    """A transfer over ``torch.distributed`` failed because the peer rank died or its connection broke.

    Every pending transfer from that peer fails with it, at once; the message names
    the peer's rank and chains the backend's error.
    """


class TransferTimeoutError(TensorDictError, TimeoutError, RuntimeError):
    """A transfer over ``torch.distributed`` did not finish within the ``timeout`` given to ``wait``.

    A ``RuntimeError`` too, what ``torch.distributed.Work.wait`` raises on a timeout.
    """


class MemmapFormatError(TensorDictError, ValueError):
    """A memory-mapped folder does not follow the on-disk format (a bad folder)."""


class ArchiveFormatError(MemmapFormatError):
    """A ``.tdz`` archive is not a valid zip of a memory-mapped tree (a bad archive).

    Its message names the archive and, when there is one, the entry at fault.
    """


class ArchiveNotWritableError(TensorDictError, RuntimeError):
    """An archive opened with ``mode="r+"`` holds an entry that in-place writes cannot reach.

    A compressed or unaligned entry and a nested tensor are copied when read, so a
    write into the loaded leaf would never reach the file.
    """


class ArchiveTargetError(TensorDictError, ValueError):
    """An archive cannot be written at the path given (a folder there, or inside its own source)."""


class SymlinkError(MemmapFormatError, RuntimeError):
    """A symbolic link where the format has a file or folder: never followed, never written through.

    A ``ValueError`` when a folder is read (a bad folder) and a ``RuntimeError`` when
    a file is written, as the well-known API raises for files it cannot use.
    """


class PickleRefusedError(MemmapFormatError, RuntimeError):
    """A saved value is pickled and the load was not given ``allow_pickle=True``: nothing is unpickled.

    A ``RuntimeError`` too, what the well-known API raises for it.
    """


class MemmapNotFoundError(TensorDictError, FileNotFoundError):
    """A memory-mapped folder or one of its files is missing."""


class ExistingFileError(TensorDictError, FileExistsError, RuntimeError):
    """A file that must be created already exists (``existsok=False``).

    Also a ``RuntimeError``, what the well-known API raises for it.
    """


class MappedElsewhereError(TensorDictError, RuntimeError):
    """A leaf already memory-mapped in one file was asked to go to another (``copy_existing=False``)."""


class EntryExistsError(TensorDictError, RuntimeError):
    """A key that is being added exists already (in memory, or recorded by another writer)."""


class NotAFolderError(TensorDictError, NotADirectoryError, ValueError):
    """A path given as a memory-mapped folder is a file (the well-known API raises ValueError)."""


class NotDifferentiableError(TensorDictError, RuntimeError):
    """A leaf that cannot require gradients (an integer or boolean tensor) was asked to."""


class NotMemmapError(TensorDictError, RuntimeError):
    """A memory-mapping method was called on a tensordict that is not memory-mapped."""


class MappingLimitError(TensorDictError, RuntimeError):
    """Memory-mapping would need more mappings than the kernel allows this process (``vm.max_map_count``)."""


class ReadOnlyMemmapError(NotMemmapError):
    """A tensordict loaded with ``mode="r"`` was asked to change its folder."""


class AppendError(TensorDictError, ValueError):
    """Rows cannot be appended to a saved tensordict (``append_memmap``): another structure, or a kind that cannot grow."""


class UnknownFieldError(TensorDictError, AttributeError, TypeError, ValueError):
    """A name that is not a field of the tensorclass was given as one.

    It subclasses ``TypeError`` (what a dataclass raises for an unexpected keyword
    argument), ``AttributeError`` (what the well-known API raises when setting it)
    and ``ValueError`` (what it raises from ``update``).
    """


class UnexpectedStateKeyError(_Sentence, TensorDictError, KeyError):
    """A state dict given to a tensorclass's ``load_state_dict`` holds a key that is no field."""


class ReservedFieldError(TensorDictError, AttributeError):
    """A field is named like a tensordict method or attribute, and ``shadow`` is off."""


class NotTensorCollectionError(TensorDictError, TypeError, AttributeError):
    """A function over tensordicts was given something that is not one (a tensor, a dict, ...).

    Also an ``AttributeError``, what the well-known API raises when it reaches for
    a tensordict attribute on such a value.
    """


class TooFewInputsError(TensorDictError, RuntimeError):
    """A function that combines tensordicts got fewer than it needs (none, or one to merge)."""


class PaddingError(TensorDictError, RuntimeError):
    """Padding is impossible: a bad ``pad_size``, a negative size, a scalar, or shapes that differ."""


class InvalidArgumentError(TensorDictError, ValueError):
    """An argument has a value the function does not accept (a side, a missing dimension, options that clash)."""


class MaskError(InvalidArgumentError):
    """A padding mask is missing, has the wrong shape or dtype, or marks a row that is not one run."""


class EntryTypeError(TensorDictError, TypeError):
    """An entry is of a kind the function cannot use (a sub-tensordict, values that cannot be sorted)."""


class AbstractClassError(TensorDictError, NotImplementedError):
    """An abstract class (``TensorCollection``, ``TensorClass``) was instantiated."""


class ClassFlagError(TensorDictError, TypeError):
    """A tensorclass was defined with flags that do not exist or do not go together."""


class FieldCastError(TensorDictError, TypeError, ValueError):
    """With ``autocast``, a value could not be cast to the annotation of its field.

    A ``TypeError`` (what the well-known API raises when the annotation is a tensor
    type) and a ``ValueError`` (what it lets through from ``int("x")`` and the like).
    """


class MissingFieldError(TensorDictError, TypeError):
    """A required field of a typed tensordict was not given (a ``TypeError``, as for a missing argument)."""


class UnsetFieldError(TensorDictError, AttributeError):
    """A declared field of a typed tensordict, without a default, is read while it is not set."""


class UnbatchedMemmapError(TensorDictError, NotImplementedError):
    """An ``UnbatchedTensor`` entry was to be memory-mapped, which is not supported yet."""


class ConversionInputError(TensorDictError, TypeError, AttributeError):
    """A converter (``from_namedtuple``, ``from_struct_array``, ``from_module``, ...) got the wrong kind of object.

    Also an ``AttributeError``, what the well-known API raises when it reaches for
    an attribute (``_asdict``, ``dtype``, ``_parameters``) that such an object lacks.
    """


class ConflictingArgumentsError(TensorDictError, TypeError):
    """Two arguments that exclude each other were both given (``batch_size`` and ``auto_batch_size``)."""


class UnsupportedConversionError(TensorDictError, NotImplementedError):
    """A value or an option that the converters do not handle (a pytree leaf of an unknown type)."""


class WorkerDiedError(TensorDictError, RuntimeError):
    """A worker process of ``map``/``map_iter`` died while the call waited for its result."""


class EntryDtypeError(TensorDictError, TypeError, RuntimeError):
    """A value written into an entry's rows by a tensor index has another dtype than the entry.

    torch's index writes do not cast (a ``RuntimeError``); raised before any entry is
    written, naming the key and both dtypes.
    """


class ShapeMismatchError(TensorDictError, RuntimeError):
    """Tensors that must be stacked into one entry have different shapes (naming the key)."""


class AxisRangeError(DimensionError, ValueError):
    """A batch dim out of range where the well-known API raises ``ValueError`` (``swapaxes``)."""


class ShapeArgumentError(TensorDictError, RuntimeError):
    """Arguments of a shape method that do not fit the batch size or each other.

    ``roll`` shifts and dims of different lengths, ``narrow`` past the end of a dim,
    ``rot90`` or ``fliplr`` with too few batch dims, a dim repeated in ``movedim``,
    a batch size that does not broadcast to a shape.
    """


class PermutationError(ShapeArgumentError, ValueError):
    """``permute`` dims that do not name each batch dim once (one repeated, or too few or many).

    A ``ValueError`` as the well-known API's ``permute`` raises, and a ``RuntimeError`` as
    its legacy lazy ``permute`` does.
    """


class SharedValueError(TensorDictError, TypeError, ValueError):
    """A value a shared non-tensor entry cannot hold: not a JSON value, or too long for its buffer."""


class SplitSizeError(ShapeArgumentError, ValueError):
    """``split`` with an int size that is not positive (``ValueError`` as the well-known API raises it)."""


class LazyViewError(TensorDictError, RuntimeError):
    """A lazy view of the legacy lazy mode was asked to change what follows its source.

    Its shape methods outside the legacy mode, its batch size or names, and in-place
    changes of its keys (``select(..., inplace=True)``): make it dense first
    (``to_tensordict()``), or change the source.
    """


class LazyViewCastError(LazyViewError, TypeError):
    """``to(..., inplace=True)`` or ``to(batch_size=...)`` on a lazy view of the legacy lazy mode (a TypeError, as the well-known API)."""


class DensifyError(TensorDictError, NotImplementedError):
    """A lazy stack that ``densify`` cannot turn dense: its stack dim is not 0."""


class IndexShapeError(TensorDictError, NotImplementedError):
    """An index tensor whose number of dims the method does not support (``gather`` needs the batch dims'; ``NotImplementedError`` is a ``RuntimeError``)."""


class IndexTypeError(TensorDictError, IndexError, TypeError):
    """An index item of a type that no batch dim is indexed by (a set, a float, a string in a tuple).

    torch refuses such items with an ``IndexError`` and the well-known API's lazy stacks
    with a ``TypeError``; this is both.
    """


class FirstClassDimError(TensorDictError, ValueError):
    """A first-class dim (``functorch.dim``) where it cannot bind: a lazy stack's stack dim, or a memory-mapped tensordict."""


class CopyAtError(TensorDictError, RuntimeError):
    """``copy_at_(..., fast=True)`` got a source, destination or index the tensor-only copy cannot take."""


class RenameDestinationError(TensorDictError, ValueError):
    """``rename_keys`` would write over an entry that is not renamed away."""


class ReplaceArgumentError(TensorDictError, RuntimeError):
    """``replace()`` got more than one positional argument, or one that is not a dict or tensordict."""


class UnknownStorageError(TensorDictError, ValueError):
    """``from_schema()`` got a ``storage`` it does not support, or a schema entry that is not a pair."""


_PACKAGE = os.path.dirname(os.path.abspath(__file__)) + os.sep


def warn(message: str, category: type[Warning]) -> None:
    """Emits a warning that points at the first caller outside this package.

    However many tensordict frames lie between the user's call and this one (a
    tensorclass forwarding to its tensordict, a lazy stack to its members), the
    warning names the user's file and line.
    """
    frame = sys._getframe(1)
    level = 2  # 1 would be this function, 2 its caller
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE):
        frame = frame.f_back
        level += 1
    warnings.warn(message, category, stacklevel=level)


class AcceleratorUnavailableError(TensorDictError, RuntimeError):
    """A method needs a CUDA device (pinned memory, streams) and none is available."""


class DeviceUnavailableError(AcceleratorUnavailableError, AssertionError):
    """A device was asked for that this machine lacks (torch asserts, hence ``AssertionError``)."""


class ConsolidateArgumentError(TensorDictError, NotImplementedError):
    """``consolidate()`` got arguments that cannot go together (``NotImplementedError`` is a ``RuntimeError``)."""


class ConsolidateEntryError(TensorDictError, NotImplementedError):
    """``consolidate()`` met an entry it cannot hold (a strided nested tensor, an unbatched one)."""


class ConsolidatedFormatError(TensorDictError, RuntimeError, ValueError):
    """A consolidated file cannot be read, or its metadata cannot be written as JSON."""


class ConsolidatedNotFoundError(TensorDictError, FileNotFoundError):
    """The file given to ``from_consolidated`` does not exist (its ``filename`` is the path)."""


class DimNameConflictError(TensorDictError, RuntimeError, ValueError):
    """A sub-tensordict whose leading dim names differ from its parent's (they share those dims)."""


class DimTypeError(TensorDictError, TypeError, ValueError):
    """A dim argument that must be an int is of another type (torch raises either builtin)."""


class ValueAtIndexError(TensorDictError, ValueError, RuntimeError):
    """A NonTensorData, one value for its whole batch, was given another value at an index.

    The well-known API raises ``ValueError``; earlier versions of this library raised
    ``RuntimeError``, kept as a base so that code catching it keeps working.
    """
