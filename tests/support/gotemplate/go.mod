module gotemplate

go 1.22
