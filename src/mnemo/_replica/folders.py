"""Is a file inside a folder that a file-sync tool manages? A live SQLite store there is copied
while it is written (its WAL apart from it) and forks or breaks; ``mnemo sync`` is the safe way."""

from __future__ import annotations

from pathlib import Path

#: marker files or folders a tool keeps in (or above) the folders it syncs
MARKERS = {".stfolder": "Syncthing", ".dropbox": "Dropbox", ".dropbox.cache": "Dropbox", ".nutstore": "坚果云 (Nutstore)",
           ".nutstore_meta": "坚果云 (Nutstore)", ".tmp.drivedownload": "Google Drive"}
#: folder names the tools give their synced roots
NAMES = {"dropbox": "Dropbox", "icloud drive": "iCloud", "mobile documents": "iCloud", "com~apple~clouddocs": "iCloud",
         "onedrive": "OneDrive", "坚果云": "坚果云 (Nutstore)", "nutstore": "坚果云 (Nutstore)", "nutstore files": "坚果云 (Nutstore)",
         "google drive": "Google Drive", "googledrive": "Google Drive", "my drive": "Google Drive", "syncthing": "Syncthing",
         "百度网盘": "百度网盘", "baidunetdisk": "百度网盘"}


def sync_tool_of(path: str | Path) -> str | None:
    """The sync tool whose folder holds ``path`` (by marker files above it, or the folder names
    the tools use), or None."""
    p = Path(path).expanduser().resolve()
    for folder in [p.parent, *p.parent.parents]:
        name = folder.name.lower()
        if name in NAMES or name.startswith("onedrive - ") or name.startswith("dropbox ("):
            return NAMES.get(name, "OneDrive" if name.startswith("onedrive") else "Dropbox")
        for marker, tool in MARKERS.items():
            try:
                if (folder / marker).exists():
                    return tool
            except OSError:
                continue
    return None
