NAME = 'j'
