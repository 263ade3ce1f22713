"""Reading files, folders, chat exports and web pages into chunks (pure: no store access)."""
