print("touchgate")
