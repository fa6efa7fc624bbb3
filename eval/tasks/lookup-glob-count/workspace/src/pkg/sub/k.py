NAME = 'k'
