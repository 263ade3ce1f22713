"""Settings and the front door: config.toml + environment, encryption keys, scope resolution, ``open_mnemo``."""
