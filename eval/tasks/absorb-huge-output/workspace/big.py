for i in range(1, 200001):
    print("the secret word is lantern" if i == 100000 else f"row {i:06d}")
