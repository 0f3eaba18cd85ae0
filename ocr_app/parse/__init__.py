"""Generic checks on what engines return (engines return blocks; DeepSeek's own grammar is parsed in
its wing, ``engines/deepseek/grounding.py``). Pure functions, no torch."""
