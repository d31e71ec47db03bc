enum VigilTestSupportPlaceholder {}
