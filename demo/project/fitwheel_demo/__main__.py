from fitwheel_demo import describe

print(describe())
