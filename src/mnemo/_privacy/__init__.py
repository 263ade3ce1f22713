"""Privacy policies: the redactor (secrets and PII masked before anything is stored)."""
