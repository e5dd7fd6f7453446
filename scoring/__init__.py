"""Pure policy: no I/O imports (enforced by tests/test_import_contract.py)."""
