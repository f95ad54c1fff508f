"""The task of each public method and function: the table behind the "Methods by task" page.

Every public method of ``TensorDictBase`` is in exactly one task, and so is every function
of ``tensordict.__all__``; ``tests/test_docs_site.py`` fails naming a method or function
that has no place here (or one that is gone). A new method goes into the task a user would
look under first. ``scripts/api_pages.py`` writes the page from this table.
"""

from __future__ import annotations

# (title, what the task is about, TensorDictBase methods, functions of tensordict)
TASKS: list[tuple[str, str, str, str]] = [
    (
        "Build",
        "Make a tensordict, an empty one of the same structure, or a copy.",
        """
        clone copy empty new_empty new_full new_ones new_tensor new_zeros
        from_dict_instance from_list from_schema
        """,
        """
        from_dict fromkeys make_tensordict from_any
        """,
    ),
    (
        "Keys and entries",
        "Read, write, remove and rename entries; walk and select keys.",
        """
        clear create_nested del_ depth entry_class exclude filter_empty_ flatten_keys get
        get_item_shape is_empty items keys pop popitem rename_key_ rename_keys replace select
        separates set set_ setdefault sorted_keys split_keys unflatten_keys update update_
        values
        """,
        """
        unravel_key unravel_key_list unravel_key_to_tuple default_is_leaf merge_tensordicts
        parse_tensor_dict_string
        """,
    ),
    (
        "Index",
        "Take or write the batch elements that an index, a mask or a condition selects.",
        """
        get_at set_at_ update_at_ copy_at_ gather masked_fill masked_fill_ masked_select where
        """,
        "",
    ),
    (
        "Shape",
        "The batch dims and their names; reshape, stack, split and rearrange the elements.",
        """
        atleast_1d atleast_2d atleast_3d batch_dims batch_size broadcast_to
        cat cat_from_tensordict cat_tensors chunk densify dim expand expand_as flatten flip
        fliplr flipud lazy_stack maybe_dense_stack moveaxis movedim names narrow ndim
        ndimension numel pad permute rename_ repeat repeat_interleave reshape roll rot90
        shape size split squeeze stack stack_from_tensordict stack_tensors swapaxes swapdims
        tensor_split tile to_lazystack to_padded_tensor transpose unbind unflatten unsqueeze
        view
        """,
        """
        stack cat lazy_stack dense_stack_tds maybe_dense_stack pad pad_sequence
        unpad_sequence collate group_by
        """,
    ),
    (
        "Math",
        "Arithmetic and elementwise functions, leaf by leaf; functions over every leaf; gradients.",
        """
        abs abs_ acos acos_ add add_ addcdiv addcdiv_ addcmul addcmul_ apply apply_ asin asin_
        atan atan2 atan2_ atan_ backward bitwise_and bitwise_not bitwise_not_ ceil ceil_ clamp
        clamp_ clamp_max clamp_max_ clamp_min clamp_min_ cos cos_ cosh cosh_ data detach
        detach_ div div_ erf erf_ erfc erfc_ exp exp2 exp2_ exp_ expm1 expm1_ fill_ floor
        floor_ fmod fmod_ frac frac_ grad lerp lerp_ lgamma lgamma_ log log10 log10_ log1p
        log1p_ log2 log2_ log_ logical_and logical_not logical_not_ maximum maximum_ minimum
        minimum_ mod mul mul_ named_apply neg neg_ pow pow_ reciprocal reciprocal_ relu relu_
        remainder remainder_ requires_grad requires_grad_ round round_ rsqrt rsqrt_ rsub sgn
        sgn_ sigmoid sigmoid_ sign sign_ sin sin_ sinh sinh_ softmax sqrt sqrt_ square square_
        sub sub_ tan tan_ tanh tanh_ trunc trunc_ zero_ zero_grad
        """,
        "",
    ),
    (
        "Compare and reduce",
        "Tests on values, reductions over the batch dims or over every leaf, comparisons.",
        """
        all amax amin any cummax cummin isfinite isnan isneginf isposinf isreal logsumexp max
        mean median min nanmean nansum norm prod quantile std sum var
        """,
        """
        assert_close assert_allclose_td
        """,
    ),
    (
        "Devices and dtypes",
        "Where the tensors live and what type they hold; contiguous and pinned copies.",
        """
        as_tensor auto_device_ bfloat16 bool bytes clear_device_ complex128 complex32 complex64
        contiguous copy_ cpu cuda data_ptr device double dtype float float16 float32 float64
        half int int16 int32 int64 int8 is_contiguous is_cpu is_cuda is_floating_point
        is_meta long param_count pin_memory pin_memory_ qint32 qint8 quint4x2 quint8
        record_stream to type uint16 uint32 uint64 uint8
        """,
        """
        is_bool is_floating is_inexact is_integer
        """,
    ),
    (
        "Memory mapping",
        "Tensors in files or in shared memory: write, load, grow and refresh a folder.",
        """
        is_memmap load_memmap load_memmap_ make_memmap make_memmap_from_storage
        make_memmap_from_tensor memmap memmap_ memmap_like memmap_refresh_ saved_path
        """,
        """
        load_memmap append_memmap
        """,
    ),
    (
        "Files and archives",
        "One buffer, one file: consolidated tensordicts, saved folders, .tdz archives, packing.",
        """
        clear_refs_for_compile_ consolidate dumps from_consolidated is_consolidated load load_
        pack save
        """,
        """
        from_consolidated load save is_memmap_archive pack_memmap unpack_memmap
        refresh_archive_checksums from_safetensors to_safetensors
        """,
    ),
    (
        "Across processes",
        "Share a tensordict with worker processes on one machine, and run functions in them.",
        """
        is_shared map map_iter share_memory_
        """,
        "",
    ),
    (
        "Across machines",
        "Send, receive and reduce tensordicts over ``torch.distributed``.",
        """
        all_gather all_reduce arecv asend broadcast from_remote_init gather_and_stack
        init_remote irecv isend recv reduce scatter send
        """,
        "",
    ),
    (
        "Non-tensor data",
        "Strings, objects and other values that are not tensors, kept beside the tensors.",
        """
        filter_non_tensor_data get_non_tensor is_non_tensor non_tensor_items set_non_tensor
        tolist
        """,
        """
        is_non_tensor is_leaf_nontensor
        """,
    ),
    (
        "Tensorclass",
        "Dataclasses whose fields are tensors and tensordicts.",
        """
        from_dataclass
        """,
        """
        tensorclass is_tensorclass from_dataclass is_tensor_collection
        """,
    ),
    (
        "Conversion",
        "To and from dicts, named tuples, pytrees, structured arrays, HDF5 files, modules and states.",
        """
        attrs from_any from_h5 from_module from_modules from_namedtuple from_pytree
        from_struct_array from_tuple load_state_dict numpy state_dict to_dict to_h5 to_module
        to_namedtuple to_pytree to_struct_array
        """,
        """
        from_module from_modules from_namedtuple from_pytree from_struct_array from_tuple
        """,
    ),
    (
        "Locking",
        "Lock a tensordict against changes of its structure, and unlock it.",
        """
        is_locked lock_ unlock_
        """,
        "",
    ),
    (
        "Options",
        "The global settings of the package and the blocks that change them for a while.",
        "",
        """
        set_printoptions get_printoptions set_lazy_legacy lazy_legacy set_list_to_stack
        list_to_stack set_capture_non_tensor_stack capture_non_tensor_stack
        get_defaults_to_none set_get_defaults_to_none
        """,
    ),
]


def task_table() -> list[tuple[str, str, list[str], list[str]]]:
    """The table with its name lists split: (title, about, methods, functions)."""
    return [(title, about, m.split(), f.split()) for title, about, m, f in TASKS]
