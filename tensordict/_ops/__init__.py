"""Operations shared by every tensordict class: indexing, shapes, pointwise math, torch dispatch."""
