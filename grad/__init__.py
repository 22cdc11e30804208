"""placeholder: see issue 3"""
