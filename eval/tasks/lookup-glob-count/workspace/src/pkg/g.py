NAME = 'g'
