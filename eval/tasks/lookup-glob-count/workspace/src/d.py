NAME = 'd'
