NAME = 'e'
