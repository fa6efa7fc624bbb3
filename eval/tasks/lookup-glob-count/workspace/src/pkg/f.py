NAME = 'f'
