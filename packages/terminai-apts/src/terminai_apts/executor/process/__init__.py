"""The processes inside the boundary: the warm zygote (the fork server of runs) and each
run's keeper and child, which apply the OS layer (``os_layer/``) and then run the program
under the Python layer (``python_layer/``). Started by module path; the host never imports them."""
