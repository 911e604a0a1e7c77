import textwrap

text = (
    "The quarterly review found that most incidents were caused by configuration drift "
    "between staging and production, and that runbooks were often out of date."
)
print(textwrap.fill(text, width=36, initial_indent="* ", subsequent_indent="  "))
print(textwrap.shorten(text, width=50, placeholder=" [..]"))
print(textwrap.indent("a\nb", "> "))
