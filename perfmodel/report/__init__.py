"""Renderers: rich terminal output and json / csv / markdown / junit writers. No model code here."""
