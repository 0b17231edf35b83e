__all__: list[str] = []  # nothing here is for the other rooms
