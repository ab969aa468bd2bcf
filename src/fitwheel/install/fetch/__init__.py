"""Downloads: wheels and sdists fetched into the wheel cache, hashed on arrival."""
