"""dealer: a game-moderator daemon for forum, Discord and PM casino games."""

__version__ = "0.1.0"
