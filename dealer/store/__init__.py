"""The durable store: SQLAlchemy models, the engine, and the schema check."""
