"""Storage: the SQLite connection helper, migrations, vector tables and the Database service."""
