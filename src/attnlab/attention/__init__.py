"""Pure attention math: NumPy references and torch twins, no training state."""
from attnlab.attention.positions import apply_rope, apply_rope_np, sinusoidal_table, sinusoidal_table_np

__all__ = ["apply_rope", "apply_rope_np", "sinusoidal_table", "sinusoidal_table_np"]
