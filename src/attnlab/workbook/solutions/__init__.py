"""attnlab's own answers to the code exercises. The checks compare a student's results with these;
no check prints them (tests/workbook check that the messages never contain their source)."""
