"""The implementation of ``@tensorclass`` and ``TensorClass``, one module per job.

:mod:`tensordict.tensorclass` is the public face over these modules. From the
bottom up (each imports only the modules listed before it, and the layers of the
package below the tensorclass):

- :mod:`~tensordict._tensorclass.flags`: the class flags (``autocast``, ``nocast``,
  ...) and what a field stores for each value it is given;
- :mod:`~tensordict._tensorclass.fields`: the descriptor of a field and the
  generated ``__init__``;
- :mod:`~tensordict._tensorclass.forwarding`: a tensordict method as a method of the
  instance (arguments unwrapped, result wrapped as the class), and the class-level
  builders and forwarders;
- :mod:`~tensordict._tensorclass.memmap`: the hooks that memory-map, load and
  refresh a tensorclass, and the registration of its loaders;
- :mod:`~tensordict._tensorclass.methods`: ``_TensorClassMethods``, the holder of
  the methods every tensorclass gets;
- :mod:`~tensordict._tensorclass.decorator`: :func:`~tensordict.tensorclass`, which
  copies those methods onto a class, and the registry of decorated classes;
- :mod:`~tensordict._tensorclass.base_class`: :class:`~tensordict.TensorClass` and
  its metaclass, the subclassing form of the decorator;
- :mod:`~tensordict._tensorclass.from_dataclass`: :func:`~tensordict.from_dataclass`.

Names without a leading underscore in these private modules are their protocol
with one another; each is documented where it is defined.
"""
