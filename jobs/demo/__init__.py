"""The `make demo` platform tour: example jobs, a realistic file generator, and the launcher."""
