NAME = 'h'
