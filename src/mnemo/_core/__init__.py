"""The core: ``Mnemo`` and its operations, split by topic into mixins that make up the one class."""
