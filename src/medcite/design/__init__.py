"""Study designs: what kind of study each cited article is (registry stage ``design``), and medcite's uses of it."""
