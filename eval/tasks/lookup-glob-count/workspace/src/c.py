NAME = 'c'
