"""The ground floor: the memory record, text handling shared by every layer, token estimates."""
