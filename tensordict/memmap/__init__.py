"""Memory-mapped storage: tensors in files or shared memory, and the on-disk format."""
