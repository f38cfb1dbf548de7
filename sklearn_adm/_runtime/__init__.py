"""What a computation needs of the process it runs in: CPU threads, the device, the C
allocator, warnings raised at the caller's line. Each setting is taken for one fit and given
back when it ends. Imports nothing else of the package."""
