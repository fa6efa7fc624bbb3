NAME = 'i'
