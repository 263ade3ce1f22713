"""The ``mnemo`` command line: thin commands over one ``Mnemo`` operation each."""
