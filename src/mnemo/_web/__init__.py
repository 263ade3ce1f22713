"""``mnemo web``: a local web app and REST API over the same core (see ``app``, ``api``, ``server``)."""
