"""Model wings: everything that knows one model (its config, loading, precision, prompts, modes,
decoding, kernels and quantisation recipes) lives in its own package here; engines/ holds the thin
adapters the converter sees, and quant/ knows no model."""
