module flotilla.dev/client

go 1.19
