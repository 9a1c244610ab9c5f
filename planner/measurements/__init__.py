"""Measured operating points beside the model: the table (``table``), importers of benchmark result files
(``importers``), and the options a plan takes from them (``curves``). docs/INTERFACE.md 7.10 and docs/MODEL.md 12."""
