"""BioASQ question answering (Phase A+ and B): exact answers by question type and ideal answers."""
